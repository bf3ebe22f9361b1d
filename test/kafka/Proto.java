// Proto: Protobuf messages written and read by Google's own Java library
// (the reference encoder and decoder), in Confluent's wire format: what
// ssp's Protobuf reader must read, written by code that is not ssp's, and
// what ssp writes, read back by it.  Schemas are .proto text, compiled by
// Google's protoc (fetched from Maven Central; its path in $SSP_PROTOC).
//
//   kafka_ctl run DIR Proto produce BOOTSTRAP TOPIC REGISTRY PROTO_FILE [options] < lines
//       --message NAME      the message written (default: the file's first)
//       --reference NAME=FILE  a file PROTO_FILE imports as NAME, registered
//                           under the subject NAME first (repeatable)
//       --key-proto FILE    lines are KEY<TAB>VALUE, the key in Protobuf too
//                           (subject TOPIC-key, its first message)
//       --id ID             frame with this id, registering nothing
//       --partition N       every message to partition N
//     Each line is a message in Protobuf's JSON form (JsonFormat): field
//     names as declared or in lowerCamelCase, bytes in base64, enums by
//     name, Timestamp "...Z", Duration "1.5s"; "null" is a null value.
//     Prints "produced N schema ID".
//
//   kafka_ctl run DIR Proto consume BOOTSTRAP TOPIC REGISTRY COUNT [--key]
//     Reads COUNT messages from the beginning of every partition (30 s at
//     most), decodes each value (or key) with the schema and message its
//     framing names, and prints "PARTITION:OFFSET<TAB>JSON" in partition
//     and offset order (JsonFormat, the fields' declared names, fields
//     without presence printed even when default).
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.DescriptorProtos.FileDescriptorProto;
import com.google.protobuf.DescriptorProtos.FileDescriptorSet;
import com.google.protobuf.Descriptors.Descriptor;
import com.google.protobuf.Descriptors.FileDescriptor;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.util.JsonFormat;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Proto {
    static final ObjectMapper json = new ObjectMapper();
    static final String[] WELL_KNOWN = {"any", "api", "descriptor", "duration", "empty", "field_mask",
        "source_context", "struct", "timestamp", "type", "wrappers"};

    public static void main(String[] args) throws Exception {
        if (args[0].equals("produce"))
            produce(args);
        else if (args[0].equals("consume"))
            consume(args);
        else
            throw new IllegalArgumentException("Proto produce|consume ...");
    }

    // compile: the file descriptor of a .proto text and the files it imports (name -> text)
    static FileDescriptor compile(String text, Map<String, String> imports) throws Exception {
        Path dir = Files.createTempDirectory("proto");
        try {
            for (String wk : WELL_KNOWN) {
                try (InputStream in = Proto.class.getClassLoader().getResourceAsStream("google/protobuf/" + wk + ".proto")) {
                    if (in == null)
                        continue;
                    Path p = dir.resolve("google/protobuf/" + wk + ".proto");
                    Files.createDirectories(p.getParent());
                    Files.write(p, in.readAllBytes());
                }
            }
            for (Map.Entry<String, String> e : imports.entrySet()) {
                Path p = dir.resolve(e.getKey());
                Files.createDirectories(p.getParent());
                Files.writeString(p, e.getValue());
            }
            Files.writeString(dir.resolve("main.proto"), text);
            Path set = dir.resolve("set.pb");
            Process pr = new ProcessBuilder(System.getenv("SSP_PROTOC"), "--include_imports",
                "--descriptor_set_out=" + set, "-I", dir.toString(), dir.resolve("main.proto").toString())
                .redirectErrorStream(true).start();
            String err = new String(pr.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (pr.waitFor() != 0)
                throw new RuntimeException("protoc: " + err);
            Map<String, FileDescriptor> built = new HashMap<>();
            FileDescriptor last = null;
            for (FileDescriptorProto fp : FileDescriptorSet.parseFrom(Files.readAllBytes(set)).getFileList()) {
                List<FileDescriptor> deps = new ArrayList<>();
                for (String d : fp.getDependencyList())
                    deps.add(built.get(d));
                last = FileDescriptor.buildFrom(fp, deps.toArray(new FileDescriptor[0]));
                built.put(fp.getName(), last);
            }
            return last;        // protoc lists a file after its imports
        } finally {
            try (var walk = Files.walk(dir)) {
                walk.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
            }
        }
    }

    // nested: a message's nested messages, without map entries (as Confluent counts them)
    static List<Descriptor> nested(List<Descriptor> all) {
        List<Descriptor> out = new ArrayList<>();
        for (Descriptor d : all)
            if (!d.getOptions().getMapEntry())
                out.add(d);
        return out;
    }

    static boolean path(List<Descriptor> list, Descriptor m, List<Integer> out) {
        List<Descriptor> l = nested(list);
        for (int i = 0; i < l.size(); i++) {
            out.add(i);
            if (l.get(i) == m || path(l.get(i).getNestedTypes(), m, out))
                return true;
            out.remove(out.size() - 1);
        }
        return false;
    }

    static void zigzag(ByteArrayOutputStream out, int v) {
        long z = ((long) v << 1) ^ (v >> 31);
        while ((z & ~0x7fL) != 0) {
            out.write((int) ((z & 0x7f) | 0x80));
            z >>>= 7;
        }
        out.write((int) z);
    }

    static int readZigzag(ByteBuffer b) {
        long v = 0;
        int shift = 0;
        while (true) {
            int x = b.get() & 0xff;
            v |= (long) (x & 0x7f) << shift;
            if ((x & 0x80) == 0)
                break;
            shift += 7;
        }
        return (int) ((v >>> 1) ^ -(v & 1));
    }

    static byte[] frame(int id, FileDescriptor file, Descriptor m, byte[] body) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        if (id >= 0) {
            out.write(0);
            out.write(ByteBuffer.allocate(4).putInt(id).array());
            List<Integer> path = new ArrayList<>();
            if (!path(file.getMessageTypes(), m, path))
                throw new RuntimeException("no message " + m.getFullName());
            if (path.size() == 1 && path.get(0) == 0)
                out.write(0);
            else {
                zigzag(out, path.size());
                for (int i : path)
                    zigzag(out, i);
            }
        }
        out.write(body);
        return out.toByteArray();
    }

    static HttpResponse<String> http(String url, String post) throws Exception {
        HttpRequest.Builder req = HttpRequest.newBuilder(URI.create(url))
            .header("Content-Type", "application/vnd.schemaregistry.v1+json");
        if (post != null)
            req.POST(HttpRequest.BodyPublishers.ofString(post));
        HttpResponse<String> r = HttpClient.newHttpClient().send(req.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200)
            throw new RuntimeException(url + ": HTTP " + r.statusCode() + " " + r.body());
        return r;
    }

    static int register(String registry, String subject, String text, Map<String, String> refs) throws Exception {
        ObjectNode body = json.createObjectNode();
        body.put("schema", text);
        body.put("schemaType", "PROTOBUF");
        ArrayNode r = body.putArray("references");
        for (String name : refs.keySet())
            r.addObject().put("name", name).put("subject", name).put("version", 1);
        String url = registry.replaceAll("/+$", "") + "/subjects/"
            + java.net.URLEncoder.encode(subject, StandardCharsets.UTF_8) + "/versions";
        return json.readTree(http(url, json.writeValueAsString(body)).body()).get("id").asInt();
    }

    static Descriptor message(FileDescriptor f, String name) {
        if (name == null)
            return f.getMessageTypes().get(0);
        for (Descriptor d : all(f.getMessageTypes(), new ArrayList<>()))
            if (d.getFullName().equals(name))
                return d;
        throw new IllegalArgumentException("no message " + name);
    }

    static List<Descriptor> all(List<Descriptor> l, List<Descriptor> out) {
        for (Descriptor d : l) {
            out.add(d);
            all(d.getNestedTypes(), out);
        }
        return out;
    }

    static byte[] encode(Descriptor m, String line, FileDescriptor f, int id) throws Exception {
        DynamicMessage.Builder b = DynamicMessage.newBuilder(m);
        JsonFormat.parser().merge(line, b);
        return frame(id, f, m, b.build().toByteArray());
    }

    static void produce(String[] args) throws Exception {
        String bootstrap = args[1], topic = args[2], registry = args[3];
        String text = Files.readString(Path.of(args[4]));
        String messageName = null, keyText = null;
        Integer partition = null, givenId = null;
        Map<String, String> refs = new LinkedHashMap<>();
        for (int i = 5; i < args.length; i += 2) {
            switch (args[i]) {
                case "--message": messageName = args[i + 1]; break;
                case "--reference": {
                    String[] nf = args[i + 1].split("=", 2);
                    refs.put(nf[0], Files.readString(Path.of(nf[1])));
                    break;
                }
                case "--key-proto": keyText = Files.readString(Path.of(args[i + 1])); break;
                case "--id": givenId = Integer.parseInt(args[i + 1]); break;
                case "--partition": partition = Integer.parseInt(args[i + 1]); break;
                default: throw new IllegalArgumentException("unrecognized option " + args[i]);
            }
        }
        FileDescriptor file = compile(text, refs);
        Descriptor m = message(file, messageName);
        int id;
        if (givenId != null)
            id = givenId;
        else {
            for (Map.Entry<String, String> e : refs.entrySet())
                register(registry, e.getKey(), e.getValue(), Map.of());
            id = register(registry, topic + "-value", text, refs);
        }
        FileDescriptor keyFile = keyText == null ? null : compile(keyText, Map.of());
        int keyId = keyText == null ? -1 : register(registry, topic + "-key", keyText, Map.of());

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
                if (keyFile != null) {
                    String[] kv = line.split("\t", 2);
                    key = encode(keyFile.getMessageTypes().get(0), kv[0], keyFile, keyId);
                    value = kv[1];
                }
                byte[] v = value.equals("null") ? null : encode(m, value, file, id);
                producer.send(new ProducerRecord<>(topic, partition, key, v)).get();
                n++;
            }
            producer.flush();
        }
        System.out.println("produced " + n + " schema " + id);
    }

    static final Map<Integer, FileDescriptor> schemas = new HashMap<>();

    static FileDescriptor schema(String registry, int id) throws Exception {
        FileDescriptor f = schemas.get(id);
        if (f == null) {
            String base = registry.replaceAll("/+$", "");
            var answer = json.readTree(http(base + "/schemas/ids/" + id, null).body());
            Map<String, String> imports = new LinkedHashMap<>();
            if (answer.has("references"))
                for (var r : answer.get("references")) {
                    var v = json.readTree(http(base + "/subjects/"
                        + java.net.URLEncoder.encode(r.get("subject").asText(), StandardCharsets.UTF_8) + "/versions/"
                        + r.get("version").asText(), null).body());
                    imports.put(r.get("name").asText(), v.get("schema").asText());
                }
            f = compile(answer.get("schema").asText(), imports);
            schemas.put(id, f);
        }
        return f;
    }

    static void consume(String[] args) throws Exception {
        String bootstrap = args[1], topic = args[2], registry = args[3];
        int count = Integer.parseInt(args[4]);
        boolean key = args.length > 5 && args[5].equals("--key");
        JsonFormat.Printer printer = JsonFormat.printer().preservingProtoFieldNames()
            .omittingInsignificantWhitespace().alwaysPrintFieldsWithNoPresence();
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
                        if (buf.get() != 0)
                            throw new RuntimeException("not in Confluent's wire format at " + r.partition() + ":" + r.offset());
                        FileDescriptor f = schema(registry, buf.getInt());
                        int n = readZigzag(buf);
                        Descriptor m;
                        if (n == 0)
                            m = f.getMessageTypes().get(0);
                        else {
                            List<Descriptor> level = nested(f.getMessageTypes());
                            m = null;
                            for (int i = 0; i < n; i++) {
                                m = level.get(readZigzag(buf));
                                level = nested(m.getNestedTypes());
                            }
                        }
                        byte[] body = new byte[buf.remaining()];
                        buf.get(body);
                        text = printer.print(DynamicMessage.parseFrom(m, body));
                    }
                    out.put(String.format("%04d:%012d", r.partition(), r.offset()), r.partition() + ":" + r.offset() + "\t" + text);
                }
            }
        }
        for (String line : out.values())
            System.out.println(line);
    }
}
