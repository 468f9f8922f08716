module github.com/roottrace/roottrace/tests/accuracy/workloads/go

go 1.21

require github.com/roottrace/roottrace/sdk/go v0.0.0

replace github.com/roottrace/roottrace/sdk/go => ../../../../sdk/go
