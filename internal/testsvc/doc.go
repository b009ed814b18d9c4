// Package testsvc starts real services as child processes for tests that
// kill and restart them: private PostgreSQL, MariaDB and NATS servers (each
// in its own temporary directory, on free ports, never the machine's shared
// services), and tierbench itself, built once per test process. Redis
// is the one shared service found here (Redis): tests share the machine's
// server, each under a key prefix of its own.
//
// Every process a test starts is killed and reaped in t.Cleanup; readiness
// is polled (a real connection, a health endpoint or a line of output)
// against a deadline, never waited for by sleeping. When a server's
// binaries are missing the test skips, unless TIERBENCH_REQUIRE_SERVICES=1,
// when it fails.
//
// testsvc is for _test.go files only: product code must not import it. It
// depends on no other tierbench package.
package testsvc
