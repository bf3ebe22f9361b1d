// AvroConsume: messages read back by Apache Avro's own Java library (the
// reference decoder), from Confluent's wire format: what ssp's Avro writer
// wrote must be what Avro reads.
//
//   kafka_ctl run DIR AvroConsume BOOTSTRAP TOPIC REGISTRY COUNT [--schema FILE] [--key]
//
// Reads COUNT messages from the beginning of every partition (30 s at
// most), decodes each value (or key, with --key) with the schema its id
// names in the registry at REGISTRY (or, unframed, with the schema in
// FILE), logical types converted (decimals, dates, times, timestamps,
// uuids), and prints one line per message, "PARTITION:OFFSET<TAB>RECORD"
// in Avro's JSON-like toString, in partition and offset order.
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.avro.Conversions;
import org.apache.avro.Schema;
import org.apache.avro.data.TimeConversions;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.io.DecoderFactory;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class AvroConsume {
    static final Map<Integer, Schema> schemas = new HashMap<>();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], registry = args[2];
        int count = Integer.parseInt(args[3]);
        Schema fixed = null;
        boolean key = false;
        for (int i = 4; i < args.length; i++) {
            if (args[i].equals("--schema"))
                fixed = new Schema.Parser().parse(new File(args[++i]));
            else if (args[i].equals("--key"))
                key = true;
            else
                throw new IllegalArgumentException("unrecognized option " + args[i]);
        }
        GenericData data = new GenericData();
        data.addLogicalTypeConversion(new Conversions.DecimalConversion());
        data.addLogicalTypeConversion(new Conversions.UUIDConversion());
        data.addLogicalTypeConversion(new TimeConversions.DateConversion());
        data.addLogicalTypeConversion(new TimeConversions.TimeMillisConversion());
        data.addLogicalTypeConversion(new TimeConversions.TimeMicrosConversion());
        data.addLogicalTypeConversion(new TimeConversions.TimestampMillisConversion());
        data.addLogicalTypeConversion(new TimeConversions.TimestampMicrosConversion());
        data.addLogicalTypeConversion(new TimeConversions.LocalTimestampMillisConversion());
        data.addLogicalTypeConversion(new TimeConversions.LocalTimestampMicrosConversion());

        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        TreeMap<String, String> out = new TreeMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo pi : consumer.partitionsFor(topic))
                parts.add(new TopicPartition(topic, pi.partition()));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.currentTimeMillis() + 30000;
            while (out.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    byte[] b = key ? r.key() : r.value();
                    String text;
                    if (b == null)
                        text = "null";
                    else {
                        ByteBuffer buf = ByteBuffer.wrap(b);
                        Schema schema = fixed;
                        if (schema == null) {
                            if (buf.get() != 0)
                                throw new RuntimeException("not in Confluent's wire format at " + r.partition() + ":" + r.offset());
                            schema = schema(registry, buf.getInt());
                        }
                        GenericDatumReader<Object> reader = new GenericDatumReader<>(schema, schema, data);
                        Object datum = reader.read(null, DecoderFactory.get().binaryDecoder(b, buf.position(), b.length - buf.position(), null));
                        text = data.toString(datum);
                    }
                    out.put(String.format("%04d:%012d", r.partition(), r.offset()), r.partition() + ":" + r.offset() + "\t" + text);
                }
            }
        }
        for (String line : out.values())
            System.out.println(line);
    }

    static Schema schema(String registry, int id) throws Exception {
        Schema s = schemas.get(id);
        if (s == null) {
            HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(registry.replaceAll("/+$", "") + "/schemas/ids/" + id)).build(),
                HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200)
                throw new RuntimeException("schema " + id + ": HTTP " + r.statusCode() + " " + r.body());
            s = new Schema.Parser().parse(new ObjectMapper().readTree(r.body()).get("schema").asText());
            schemas.put(id, s);
        }
        return s;
    }
}
