// AvroProduce: messages encoded by Apache Avro's own Java library (the
// reference encoder), in Confluent's wire format, produced by Kafka's own
// Java producer: what ssp's Avro decoder must read, written by code that is
// not ssp's.
//
//   kafka_ctl run DIR AvroProduce BOOTSTRAP TOPIC REGISTRY SCHEMA_FILE [options] < lines
//
// REGISTRY is the Schema Registry's URL: the schema is registered under the
// subject TOPIC-value (TopicNameStrategy) and each value is framed with the
// magic byte 0 and the id the registry gave; "-" writes unframed Avro.
// Options:
//   --key-schema FILE   lines are KEY<TAB>VALUE, the key in Avro too (subject TOPIC-key)
//   --partition N       every message to partition N
//   --user USER:PASS    basic auth for the registry
//   --id ID             frame with this id, registering nothing (the registry may be down)
//   --reference FILE    a schema whose named types SCHEMA_FILE uses (before it; repeatable)
// Each line is a value as JSON, read by the schema: records are objects,
// unions take the value itself (or Avro's {"type": value}), bytes and fixed
// strings of code points 0-255, enums their symbol, and the logical types
// their natural form: decimal a number or string, uuid a string, date
// "YYYY-MM-DD", time "HH:MM:SS[.fff]", timestamp "...Z" (an instant),
// local-timestamp "YYYY-MM-DDTHH:MM:SS[.fff]", duration [months, days, ms].
// Prints "produced N schema ID[ key KEY_ID]".
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStreamReader;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import org.apache.avro.Conversions;
import org.apache.avro.LogicalType;
import org.apache.avro.LogicalTypes;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class AvroProduce {
    static final ObjectMapper json = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], registry = args[2];
        Schema.Parser parser = new Schema.Parser();
        for (int i = 4; i < args.length; i += 2)
            if (args[i].equals("--reference"))
                parser.parse(new File(args[i + 1]));
        Schema schema = parser.parse(new File(args[3]));
        Schema keySchema = null;
        Integer partition = null;
        String user = null;
        Integer givenId = null;
        for (int i = 4; i < args.length; i += 2) {
            switch (args[i]) {
                case "--key-schema": keySchema = new Schema.Parser().parse(new File(args[i + 1])); break;
                case "--partition": partition = Integer.parseInt(args[i + 1]); break;
                case "--user": user = args[i + 1]; break;
                case "--id": givenId = Integer.parseInt(args[i + 1]); break;
                case "--reference": break;
                default: throw new IllegalArgumentException("unrecognized option " + args[i]);
            }
        }
        boolean framed = givenId != null || !registry.equals("-");
        int id = givenId != null ? givenId : framed ? register(registry, user, topic + "-value", schema) : -1;
        int keyId = !registry.equals("-") && keySchema != null ? register(registry, user, topic + "-key", keySchema) : -1;

        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        long n = 0;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.isBlank())
                    continue;
                byte[] key = null;
                String value = line;
                if (keySchema != null) {
                    String[] kv = line.split("\t", 2);
                    key = encode(keySchema, json.readTree(kv[0]), keyId);
                    value = kv[1];
                }
                byte[] v = value.equals("null") && schema.getType() != Schema.Type.NULL ? null
                    : encode(schema, json.readTree(value), id);
                producer.send(new ProducerRecord<>(topic, partition, key, v)).get();
                n++;
            }
            producer.flush();
        }
        System.out.println("produced " + n + " schema " + id + (keyId >= 0 ? " key " + keyId : ""));
    }

    static int register(String registry, String user, String subject, Schema schema) throws Exception {
        Map<String, String> body = new HashMap<>();
        body.put("schema", schema.toString());
        HttpRequest.Builder req = HttpRequest.newBuilder(URI.create(registry.replaceAll("/+$", "") + "/subjects/" + subject + "/versions"))
            .header("Content-Type", "application/vnd.schemaregistry.v1+json")
            .POST(HttpRequest.BodyPublishers.ofString(json.writeValueAsString(body)));
        if (user != null)
            req.header("Authorization", "Basic " + Base64.getEncoder().encodeToString(user.getBytes(StandardCharsets.UTF_8)));
        HttpResponse<String> r = HttpClient.newHttpClient().send(req.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200)
            throw new RuntimeException("registering " + subject + ": HTTP " + r.statusCode() + " " + r.body());
        return json.readTree(r.body()).get("id").asInt();
    }

    static byte[] encode(Schema schema, JsonNode v, int id) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        if (id >= 0) {
            out.write(0);
            out.write(ByteBuffer.allocate(4).putInt(id).array());
        }
        BinaryEncoder enc = EncoderFactory.get().binaryEncoder(out, null);
        new GenericDatumWriter<Object>(schema).write(datum(schema, v), enc);
        enc.flush();
        return out.toByteArray();
    }

    static byte[] codePoints(String s) {
        byte[] b = new byte[s.length()];
        for (int i = 0; i < s.length(); i++)
            b[i] = (byte) s.charAt(i);
        return b;
    }

    static boolean accepts(Schema s, JsonNode v) {
        switch (s.getType()) {
            case NULL: return v.isNull();
            case BOOLEAN: return v.isBoolean();
            case INT: case LONG: return v.isIntegralNumber() || (s.getLogicalType() != null && v.isTextual());
            case FLOAT: case DOUBLE: return v.isNumber();
            case STRING: case ENUM: return v.isTextual();
            case BYTES: case FIXED: return v.isTextual() || v.isNumber() || v.isArray();
            case ARRAY: return v.isArray();
            case MAP: case RECORD: return v.isObject();
            default: return false;
        }
    }

    // datum: the JSON value as the generic datum of the schema
    static Object datum(Schema s, JsonNode v) {
        LogicalType lt = s.getLogicalType();
        switch (s.getType()) {
            case NULL: return null;
            case BOOLEAN: return v.asBoolean();
            case INT:
                if (lt instanceof LogicalTypes.Date && v.isTextual())
                    return (int) LocalDate.parse(v.asText()).toEpochDay();
                if (lt instanceof LogicalTypes.TimeMillis && v.isTextual())
                    return (int) (LocalTime.parse(v.asText()).toNanoOfDay() / 1000000);
                return v.asInt();
            case LONG:
                if (v.isTextual()) {
                    if (lt instanceof LogicalTypes.TimeMicros)
                        return LocalTime.parse(v.asText()).toNanoOfDay() / 1000;
                    if (lt instanceof LogicalTypes.TimestampMillis)
                        return Instant.parse(v.asText()).toEpochMilli();
                    if (lt instanceof LogicalTypes.TimestampMicros) {
                        Instant t = Instant.parse(v.asText());
                        return t.getEpochSecond() * 1000000 + t.getNano() / 1000;
                    }
                    if (lt instanceof LogicalTypes.LocalTimestampMillis)
                        return LocalDateTime.parse(v.asText()).toInstant(ZoneOffset.UTC).toEpochMilli();
                    if (lt instanceof LogicalTypes.LocalTimestampMicros) {
                        Instant t = LocalDateTime.parse(v.asText()).toInstant(ZoneOffset.UTC);
                        return t.getEpochSecond() * 1000000 + t.getNano() / 1000;
                    }
                }
                return v.asLong();
            case FLOAT: return (float) v.asDouble();
            case DOUBLE: return v.asDouble();
            case STRING: return v.asText();
            case ENUM: return new GenericData.EnumSymbol(s, v.asText());
            case BYTES:
                if (lt instanceof LogicalTypes.Decimal)
                    return new Conversions.DecimalConversion().toBytes(
                        new BigDecimal(v.asText()).setScale(((LogicalTypes.Decimal) lt).getScale()), s, lt);
                return ByteBuffer.wrap(codePoints(v.asText()));
            case FIXED:
                if (lt instanceof LogicalTypes.Decimal)
                    return new Conversions.DecimalConversion().toFixed(
                        new BigDecimal(v.asText()).setScale(((LogicalTypes.Decimal) lt).getScale()), s, lt);
                if (lt != null && lt.getName().equals("uuid")) {
                    UUID u = UUID.fromString(v.asText());
                    return new GenericData.Fixed(s, ByteBuffer.allocate(16).putLong(u.getMostSignificantBits())
                                                 .putLong(u.getLeastSignificantBits()).array());
                }
                if (lt != null && lt.getName().equals("duration")) {
                    ByteBuffer b = ByteBuffer.allocate(12).order(ByteOrder.LITTLE_ENDIAN);
                    for (JsonNode x : v)
                        b.putInt((int) x.asLong());
                    return new GenericData.Fixed(s, b.array());
                }
                return new GenericData.Fixed(s, codePoints(v.asText()));
            case ARRAY: {
                List<Object> items = new ArrayList<>();
                for (JsonNode x : v)
                    items.add(datum(s.getElementType(), x));
                return new GenericData.Array<>(s, items);
            }
            case MAP: {
                Map<String, Object> m = new HashMap<>();
                v.fields().forEachRemaining(e -> m.put(e.getKey(), datum(s.getValueType(), e.getValue())));
                return m;
            }
            case RECORD: {
                GenericData.Record r = new GenericData.Record(s);
                for (Schema.Field f : s.getFields()) {
                    JsonNode x = v.get(f.name());
                    if (x == null)
                        r.put(f.name(), f.hasDefaultValue() ? GenericData.get().getDefaultValue(f) : null);
                    else
                        r.put(f.name(), datum(f.schema(), x));
                }
                return r;
            }
            case UNION: {
                // Avro's own JSON form: {"branch name": value}
                if (v.isObject() && v.size() == 1) {
                    Iterator<String> names = v.fieldNames();
                    String name = names.next();
                    for (Schema b : s.getTypes())
                        if (b.getFullName().equals(name) || b.getName().equals(name))
                            return datum(b, v.get(name));
                }
                for (Schema b : s.getTypes())
                    if (accepts(b, v))
                        return datum(b, v);
                throw new IllegalArgumentException("no branch of " + s + " takes " + v);
            }
            default:
                throw new IllegalArgumentException("type " + s.getType());
        }
    }
}
