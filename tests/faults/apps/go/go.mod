module github.com/roottrace/roottrace/tests/faults/apps/go

go 1.21

require github.com/roottrace/roottrace/sdk/go v0.0.0

replace github.com/roottrace/roottrace/sdk/go => ../../../../sdk/go
