// Package stockonlinepb is the generated code of broker.proto: the remote
// interface of Stock-Online's session bean. Package stockonline converts
// its messages to and from the bean's arguments and results; nothing else
// should depend on it.
package stockonlinepb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative broker.proto
