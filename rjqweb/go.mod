module github.com/rjqgo/rethinkdb-job-queue/rjqweb

go 1.25.0

require (
	github.com/rjqgo/rethinkdb-job-queue v0.0.0-20261129133637-75807e4f8d3f
	github.com/stretchr/testify v1.12.1
	gopkg.in/rethinkdb/rethinkdb-go.v6 v6.2.1
)

require (
	github.com/golang/protobuf v1.3.4 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hailocab/go-hostpool v0.0.0-20160125115350-e80d13ce29ed // indirect
	github.com/opentracing/opentracing-go v1.1.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/sirupsen/logrus v1.9.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/net v0.58.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	gopkg.in/cenkalti/backoff.v2 v2.2.1 // indirect
)
