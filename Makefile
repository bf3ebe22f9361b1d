# ssp: stateful stream processing over Kafka inside PostgreSQL
#
#   make            build the extension and the test broker
#   make install    install into the PostgreSQL found by PG_CONFIG
#   make demo       a local Postgres and Kafka with live data (README.md)
#   make test       install what is missing, build, run every test (README.md)
#   make bench      the benchmarks (README.md)

# src/ by layer; each folder calls only those above it in this list:
#   kafka/     librdkafka: properties and who may set them, clients
#   registry/  a Confluent-compatible Schema Registry, over HTTP (libcurl)
#   stream/    a stream's definition; messages decoded into rows and back
#   fdw/       the foreign-data wrapper: options, scans, inserts
#   compile/   CREATE VIEW: what a continuous view may be, the SQL it becomes
#   runtime/   supervisor, workers, batches, the outbox, shared memory
#   sqlfuncs/  the SQL-callable functions of operating and combining
#   ssp.c, utility.c: loading, settings, and the DDL hook over all of them
MODULE_big = ssp
OBJS = \
	src/ssp.o \
	src/utility.o \
	src/kafka/property.o \
	src/kafka/secret.o \
	src/kafka/kafka.o \
	src/registry/registry.o \
	src/stream/stream.o \
	src/stream/decode.o \
	src/stream/jsonscan.o \
	src/stream/isotime.o \
	src/stream/encode.o \
	src/stream/avro_schema.o \
	src/stream/avro_read.o \
	src/stream/avro.o \
	src/stream/avro_write.o \
	src/stream/protobuf_schema.o \
	src/stream/protobuf_read.o \
	src/stream/protobuf.o \
	src/fdw/option.o \
	src/fdw/fdw.o \
	src/fdw/scan.o \
	src/fdw/modify.o \
	src/compile/build.o \
	src/compile/catalog.o \
	src/compile/window.o \
	src/compile/aggregate.o \
	src/compile/join.o \
	src/compile/viewsql.o \
	src/compile/view.o \
	src/compile/rebuild.o \
	src/compile/output.o \
	src/compile/replace.o \
	src/compile/rollup.o \
	src/compile/shard.o \
	src/runtime/shmem.o \
	src/runtime/supervisor.o \
	src/runtime/reader.o \
	src/runtime/worker.o \
	src/runtime/batch.o \
	src/runtime/rows.o \
	src/runtime/outbox.o \
	src/sqlfuncs/operate.o \
	src/sqlfuncs/reshard.o \
	src/sqlfuncs/state_check.o \
	src/sqlfuncs/combine.o \
	src/sqlfuncs/update.o

EXTENSION = ssp
# every install and upgrade script (relative to srcdir, for VPATH builds)
DATA = $(patsubst $(srcdir)/%,%,$(wildcard $(srcdir)/sql/ssp--*.sql))
PGFILEDESC = "ssp - stateful stream processing over Kafka"

# make installcheck, against a running server with the settings of
# test/regress.conf (doc/testing.md): pg_regress (sql/, expected/) and the
# isolation specs (specs/) need the address of a Kafka without the tests'
# topics in SSP_BROKERS; the TAP tests (test/tap/t/) start their own servers and
# brokers (TAP_TESTS= leaves them out).  make test does all of it alone.
REGRESS = extension option privileges names ddl roundtrip scan formats insert view output aggregates window windowtime join streamjoin joinwindow changelog temporal join3 shard rows hostile
REGRESS_OPTS = --inputdir=$(srcdir) --load-extension=ssp
ISOLATION = batch_races index_drops
ISOLATION_OPTS = --inputdir=$(srcdir) --load-extension=ssp
TAP_TESTS = 1
PROVE_TESTS = test/tap/t/*.pl

PG_CPPFLAGS = -I$(srcdir)/src
SHLIB_LINK = -lrdkafka -lcurl
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare

EXTRA_CLEAN = test/broker/ssp_test_broker test/bench/json_parsers

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# after PGXS, which sets it empty: where the TAP tests find SspTest.pm
PROVE_FLAGS = -I test/tap

all: test/broker/ssp_test_broker

# PGXS does not track headers: every object depends on all of ours
$(OBJS): $(wildcard $(srcdir)/src/*.h $(srcdir)/src/*/*.h)

# an out-of-tree build (VPATH, as pg_buildext does) needs the folders
ifdef VPATH
$(shell mkdir -p $(sort $(dir $(OBJS))) test/broker test/bench)
endif

test/broker/ssp_test_broker: test/broker/ssp_test_broker.c
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $< -lrdkafka

# the topics of the expected outputs; the specs read the broker's address
# from a setting
installcheck: export SSP_RUN_ID ?= t
installcheck: export PGOPTIONS += -c ssp_test.brokers=$(SSP_BROKERS)
installcheck: installcheck-brokers
.PHONY: installcheck-brokers
installcheck-brokers:
	@if [ -z "$$SSP_BROKERS" ] && [ -n "$(strip $(REGRESS)$(ISOLATION))" ]; then \
		echo "make installcheck: set SSP_BROKERS to the address of a Kafka without the tests' topics (see doc/testing.md)" >&2; \
		exit 1; \
	fi

.PHONY: test bench fuzz demo demo-stop
test:
	bash test/run_tests.sh

bench:
	bash test/bench/run_bench.sh $(WORKLOADS)

FUZZ_SECONDS ?= 300
fuzz:
	bash test/fuzz/run_fuzz.sh $(FUZZ_SECONDS) keep

demo:
	bash test/demo.sh

demo-stop:
	bash test/demo_stop.sh
