# ssp: stateful stream processing over Kafka inside PostgreSQL
#
#   make            build the extension and the test broker
#   make install    install into the PostgreSQL found by PG_CONFIG
#   make demo       a local Postgres and Kafka with live data (README.md)
#   make test       install what is missing, build, run every test (README.md)
#   make bench      the benchmarks (README.md)

MODULE_big = ssp
OBJS = \
	src/ssp.o \
	src/option.o \
	src/property.o \
	src/stream.o \
	src/kafka.o \
	src/decode.o \
	src/jsonscan.o \
	src/isotime.o \
	src/encode.o \
	src/fdw.o \
	src/scan.o \
	src/modify.o \
	src/utility.o \
	src/view.o \
	src/aggregate.o \
	src/viewsql.o \
	src/join.o \
	src/catalog.o \
	src/batch.o \
	src/worker.o \
	src/supervisor.o \
	src/shmem.o \
	src/operate.o \
	src/window.o \
	src/combine.o \
	src/rollup.o \
	src/outbox.o

EXTENSION = ssp
DATA = sql/ssp--0.1.sql
PGFILEDESC = "ssp - stateful stream processing over Kafka"

REGRESS = option privileges names ddl roundtrip scan insert view aggregates window join streamjoin hostile
REGRESS_OPTS = --inputdir=. --load-extension=ssp
# specs/: races with a batch in flight (make test runs them with a broker)
ISOLATION = batch_races

SHLIB_LINK = -lrdkafka
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter \
	-Wno-missing-field-initializers -Wno-sign-compare

EXTRA_CLEAN = test/broker/ssp_test_broker test/bench/json_parsers

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

all: test/broker/ssp_test_broker

# PGXS does not track headers: every object depends on all of ours
$(OBJS): $(wildcard src/*.h)

test/broker/ssp_test_broker: test/broker/ssp_test_broker.c
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $< -lrdkafka

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
