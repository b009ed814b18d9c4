// Package rubispb is the generated code of auction.proto, the RUBiS
// business tier's remote interface (styles session and facade), and of
// entity.proto, its entity beans' remote interfaces (style entity).
// Package rubis converts its messages to and from its own types; nothing
// else should depend on it.
package rubispb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative auction.proto entity.proto
