module github.com/govs/govs

go 1.26.0

require github.com/ovn-kubernetes/libovsdb v0.8.1

require (
	github.com/stretchr/testify v1.12.1 // indirect
	golang.org/x/text v0.22.0 // indirect
)
