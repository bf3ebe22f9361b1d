// StreamsAggregate: the peer in make bench (workload streams), a Kafka
// Streams application aggregating a topic's JSON messages into a persistent
// (RocksDB, changelogged) state store, exactly once (exactly_once_v2, one
// stream thread, Kafka's other defaults: a commit every 100 ms), from the
// earliest offsets; it closes (which commits the last transaction) once its
// aggregate has taken N messages.
//
//   kafka_ctl run DIR StreamsAggregate MODE BOOTSTRAP TOPIC N APPLICATION_ID STATE_DIR
//
// MODE catchup: the catchup workload's view, count, sum and avg of amount
// by region and minute of ts over orders; prints
//   RESULT streams seconds=S running=R processed=P groups=G count=C amount=A
// S: from KafkaStreams.start() (the JVM and the topology already built) to
// the end of close(), less the time it took to read the store; R: from
// start() to the state RUNNING (its internal topics made, its tasks
// assigned and initialised, before it takes a message); G, C and A:
// the store's groups, their counts summed and their sums summed, read
// through an interactive query once N were taken.
//
// MODE fresh: count and latest produced_at by second of produced_at over
// {"seq": ..., "produced_at": ...} messages; prints "READY" once running
// (the caller then produces), and at the end
//   RESULT streams_fresh processed=P processed_ms=P50,P99,MAX committed_ms=P50,P99,MAX
//          processed_after_10s_ms=P50,P99,MAX committed_after_10s_ms=P50,P99,MAX
// the latency from each message's produced_at to the aggregate taking it
// (processed), and to the end of the commit of the transaction holding that
// update (committed: when a read_committed reader could see it); over all
// the messages, then over those produced 10 s or more after the first.
//
// Exits 1 if it fails, or takes N not within 600 s.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.Arrays;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.internals.DefaultKafkaClientSupplier;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

public class StreamsAggregate {
    static final String STORE = "orders-by-region-minute";
    static final String FRESH_STORE = "events-by-second";

    // a group of orders: count, sum and avg of amount
    static final class Agg {
        long count;
        BigDecimal sum = BigDecimal.ZERO;
        BigDecimal avg = BigDecimal.ZERO;

        Agg add(BigDecimal amount) {
            count++;
            sum = sum.add(amount);
            avg = sum.divide(BigDecimal.valueOf(count), MathContext.DECIMAL64);
            return this;
        }
    }

    static void putDecimal(ByteBuffer b, BigDecimal d) {
        byte[] u = d.unscaledValue().toByteArray();
        b.putInt(d.scale()).putShort((short) u.length).put(u);
    }

    static BigDecimal getDecimal(ByteBuffer b) {
        int scale = b.getInt();
        byte[] u = new byte[b.getShort()];
        b.get(u);
        return new BigDecimal(new BigInteger(u), scale);
    }

    static int decimalSize(BigDecimal d) {
        return 6 + d.unscaledValue().bitLength() / 8 + 1;
    }

    static final Serde<BigDecimal> DECIMAL = Serdes.serdeFrom(
        (Serializer<BigDecimal>) (topic, d) -> {
            ByteBuffer b = ByteBuffer.allocate(decimalSize(d));
            putDecimal(b, d);
            return b.array();
        },
        (Deserializer<BigDecimal>) (topic, bytes) -> getDecimal(ByteBuffer.wrap(bytes)));

    static final Serde<Agg> AGG = Serdes.serdeFrom(
        (Serializer<Agg>) (topic, a) -> {
            ByteBuffer b = ByteBuffer.allocate(8 + decimalSize(a.sum) + decimalSize(a.avg));
            b.putLong(a.count);
            putDecimal(b, a.sum);
            putDecimal(b, a.avg);
            return b.array();
        },
        (Deserializer<Agg>) (topic, bytes) -> {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            Agg a = new Agg();
            a.count = b.getLong();
            a.sum = getDecimal(b);
            a.avg = getDecimal(b);
            return a;
        });

    // a second's events: count and the latest produced_at (microseconds)
    static final Serde<long[]> COUNT_LATEST = Serdes.serdeFrom(
        (Serializer<long[]>) (topic, a) -> ByteBuffer.allocate(16).putLong(a[0]).putLong(a[1]).array(),
        (Deserializer<long[]>) (topic, bytes) -> {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            return new long[] {b.getLong(), b.getLong()};
        });

    static final ObjectMapper JSON = new ObjectMapper();

    static JsonNode parse(byte[] value) {
        try {
            return JSON.readTree(value);
        } catch (IOException e) {
            throw new RuntimeException(e);
        }
    }

    static long micros(String timestamp) {
        Instant t = OffsetDateTime.parse(timestamp).toInstant();
        return t.getEpochSecond() * 1_000_000 + t.getNano() / 1000;
    }

    static long nowMicros() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000 + t.getNano() / 1000;
    }

    // fresh: the produced_at and latency, in microseconds, of the messages
    // taken and of those whose transaction committed; pending: taken, not
    // yet committed
    static long[] processedAt, processedLatency, committedAt, committedLatency, pending;
    static int processedCount, committedCount, pendingCount;

    static synchronized void taken(long producedAt) {
        processedAt[processedCount] = producedAt;
        processedLatency[processedCount++] = nowMicros() - producedAt;
        pending[pendingCount++] = producedAt;
    }

    static synchronized void committed() {
        long now = nowMicros();
        for (int i = 0; i < pendingCount; i++) {
            committedAt[committedCount] = pending[i];
            committedLatency[committedCount++] = now - pending[i];
        }
        pendingCount = 0;
    }

    static synchronized void aborted() {
        pendingCount = 0;
    }

    // Kafka's producer, telling committed() when a transaction has committed
    static final class CommitWatchingSupplier extends DefaultKafkaClientSupplier {
        @Override
        @SuppressWarnings("unchecked")
        public Producer<byte[], byte[]> getProducer(Map<String, Object> config) {
            Producer<byte[], byte[]> producer = super.getProducer(config);
            return (Producer<byte[], byte[]>) Proxy.newProxyInstance(Producer.class.getClassLoader(),
                new Class<?>[] {Producer.class}, (proxy, method, args) -> {
                    Object result;
                    try {
                        result = method.invoke(producer, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                    if (method.getName().equals("commitTransaction"))
                        committed();
                    else if (method.getName().equals("abortTransaction"))
                        aborted();
                    return result;
                });
        }
    }

    // "P50,P99,MAX" in ms of the latencies of messages produced from "from" on
    static String percentiles(long[] at, long[] latency, int count, long from) {
        long[] a = new long[count];
        int n = 0;
        for (int i = 0; i < count; i++)
            if (at[i] >= from)
                a[n++] = latency[i];
        if (n == 0)
            return "-,-,-";
        Arrays.sort(a, 0, n);
        return String.format("%.1f,%.1f,%.1f", a[(int) Math.ceil(0.5 * n) - 1] / 1000.0,
                             a[(int) Math.ceil(0.99 * n) - 1] / 1000.0, a[n - 1] / 1000.0);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6 || !(args[0].equals("catchup") || args[0].equals("fresh"))) {
            System.err.println("usage: StreamsAggregate catchup|fresh BOOTSTRAP TOPIC N APPLICATION_ID STATE_DIR");
            System.exit(2);
        }
        boolean fresh = args[0].equals("fresh");
        String topic = args[2];
        long n = Long.parseLong(args[3]);
        AtomicLong processed = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();

        StreamsBuilder builder = new StreamsBuilder();
        if (!fresh) {
            builder.stream(topic, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .map((key, value) -> {
                    JsonNode order = parse(value);
                    // date_trunc('minute', ts): the minute since the epoch
                    long minute = Math.floorDiv(OffsetDateTime.parse(order.get("ts").asText()).toEpochSecond(), 60);
                    return KeyValue.pair(order.get("region").asText() + "|" + minute, order.get("amount").decimalValue());
                })
                .groupByKey(Grouped.with(Serdes.String(), DECIMAL))
                .aggregate(Agg::new,
                    (group, amount, agg) -> {
                        if (processed.incrementAndGet() == n)
                            done.countDown();
                        return agg.add(amount);
                    },
                    Materialized.<String, Agg, KeyValueStore<Bytes, byte[]>>as(STORE)
                        .withKeySerde(Serdes.String()).withValueSerde(AGG));
        } else {
            // room for messages taken again after an aborted transaction
            processedAt = new long[(int) (2 * n)];
            processedLatency = new long[(int) (2 * n)];
            committedAt = new long[(int) (2 * n)];
            committedLatency = new long[(int) (2 * n)];
            pending = new long[(int) (2 * n)];
            builder.stream(topic, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .map((key, value) -> {
                    long producedAt = micros(parse(value).get("produced_at").asText());
                    return KeyValue.pair(Long.toString(Math.floorDiv(producedAt, 1_000_000)), producedAt);
                })
                .groupByKey(Grouped.with(Serdes.String(), Serdes.Long()))
                .aggregate(() -> new long[2],
                    (second, producedAt, agg) -> {
                        taken(producedAt);
                        if (processed.incrementAndGet() == n)
                            done.countDown();
                        agg[0]++;
                        agg[1] = Math.max(agg[1], producedAt);
                        return agg;
                    },
                    Materialized.<String, long[], KeyValueStore<Bytes, byte[]>>as(FRESH_STORE)
                        .withKeySerde(Serdes.String()).withValueSerde(COUNT_LATEST));
        }

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[4]);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[5]);
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");

        KafkaStreams streams = fresh ? new KafkaStreams(builder.build(), p, new CommitWatchingSupplier())
                                     : new KafkaStreams(builder.build(), p);
        CountDownLatch running = new CountDownLatch(1);
        AtomicLong runningAt = new AtomicLong();
        streams.setStateListener((now, before) -> {
            if (now == KafkaStreams.State.RUNNING && running.getCount() > 0) {
                runningAt.set(System.nanoTime());
                running.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            failure.set(e);
            done.countDown();
            running.countDown();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        long t0 = System.nanoTime();
        streams.start();
        if (fresh) {
            running.await(600, TimeUnit.SECONDS);
            System.out.println("READY");
            System.out.flush();
        }
        if (!done.await(600, TimeUnit.SECONDS) || failure.get() != null) {
            System.err.println("StreamsAggregate: " + (failure.get() != null ? "failed: " + failure.get()
                               : "took " + processed.get() + " of " + n + " messages in 600 s"));
            streams.close(Duration.ofSeconds(30));
            System.exit(1);
        }
        long t1 = System.nanoTime();
        long groups = 0, count = 0;
        BigDecimal amount = BigDecimal.ZERO;
        if (!fresh) {
            ReadOnlyKeyValueStore<String, Agg> store =
                streams.store(StoreQueryParameters.fromNameAndType(STORE, QueryableStoreTypes.keyValueStore()));
            try (KeyValueIterator<String, Agg> it = store.all()) {
                while (it.hasNext()) {
                    Agg a = it.next().value;
                    groups++;
                    count += a.count;
                    amount = amount.add(a.sum);
                }
            }
        }
        long t2 = System.nanoTime();
        boolean closed = streams.close(Duration.ofSeconds(120));
        long t3 = System.nanoTime();
        if (!closed || failure.get() != null) {
            System.err.println("StreamsAggregate: did not close cleanly" + (failure.get() != null ? ": " + failure.get() : ""));
            System.exit(1);
        }
        if (!fresh) {
            System.out.printf("RESULT streams seconds=%.3f running=%.3f processed=%d groups=%d count=%d amount=%s%n",
                              ((t1 - t0) + (t3 - t2)) / 1e9, (runningAt.get() - t0) / 1e9, processed.get(),
                              groups, count, amount.toPlainString());
        } else {
            synchronized (StreamsAggregate.class) {
                if (committedCount != processedCount) {
                    System.err.println("StreamsAggregate: " + processedCount + " messages taken, " + committedCount + " committed");
                    System.exit(1);
                }
                long first = Long.MAX_VALUE;
                for (int i = 0; i < processedCount; i++)
                    first = Math.min(first, processedAt[i]);
                long warm = first + 10_000_000;
                System.out.printf("RESULT streams_fresh processed=%d processed_ms=%s committed_ms=%s"
                                  + " processed_after_10s_ms=%s committed_after_10s_ms=%s%n", processedCount,
                                  percentiles(processedAt, processedLatency, processedCount, Long.MIN_VALUE),
                                  percentiles(committedAt, committedLatency, committedCount, Long.MIN_VALUE),
                                  percentiles(processedAt, processedLatency, processedCount, warm),
                                  percentiles(committedAt, committedLatency, committedCount, warm));
            }
        }
    }
}
