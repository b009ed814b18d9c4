// Package hosts puts a run's tiers on hosts of their own: each host is a
// Linux network namespace with its own address, loopback and network
// stack, joined to the others through a veth pair to a bridge that lives
// in a namespace of its own (the switch). A link's rate is the kernel's
// tbf on both ends of every veth; its delay, the kernel here having no
// netem, is a delaying TCP proxy in front of each host's service (proxy.go).
//
// Nothing is made in the namespace tierbench was started in: the
// namespaces are named tierbench-PID-ROLE, the veth ends are eth0 inside
// a host and ROLE inside the switch, so two runs cannot collide, nor can a
// run's addresses collide with the machine's networks; Down removes all of
// it, and with the namespaces go their veths and the bridge.
//
// Everything here needs root and iproute2's ip and tc (Check).
package hosts
