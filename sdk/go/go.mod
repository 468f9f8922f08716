module github.com/roottrace/roottrace/sdk/go

go 1.21
