// SchemaRegistry: a test double of Confluent's Schema Registry REST API,
// for ssp's tests (no Schema Registry is served by the registries these
// machines reach; Apicurio Registry is, as a Quarkus application far heavier
// than a test needs).  What it answers is what Confluent documents:
//
//   GET  /schemas/ids/{id}                 {"schema": "..."[, "schemaType": "JSON"]}
//                                          404 {"error_code": 40403, ...} if unknown
//   GET  /subjects                         ["orders-value", ...]
//   GET  /subjects/{s}/versions            [1, 2, ...]
//   GET  /subjects/{s}/versions/{v|latest} {"subject", "version", "id", "schema"}
//   POST /subjects/{s}/versions            {"schema": "...", "schemaType"?: ..., "references"?: [...]} -> {"id": N}
//                                          (the same schema text again: the same id)
//
// and, for the tests, faults and counts:
//
//   POST /control/fail?status=503&seconds=30   every other request gets that status
//   POST /control/delay?ms=2000                every other request waits that long
//   GET  /control/stats                        {"schema_gets": N, "requests": N}
//
//   kafka_ctl run DIR SchemaRegistry STATE_DIR [--port P] [--user USER:PASSWORD] [--token TOKEN]
//
// listens on 127.0.0.1 (port P, or any free one), writes its port to
// STATE_DIR/port and keeps its schemas in STATE_DIR/schemas.json, so a
// registry killed and started again on the same STATE_DIR and port serves
// the same ids.  With --user (basic auth) or --token (bearer), every request
// but /control without them gets 401 {"error_code": 40101}.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.File;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;

public class SchemaRegistry {
    static final ObjectMapper json = new ObjectMapper();
    // ids are positions + 1
    static final List<ObjectNode> schemas = new ArrayList<>();
    static final Map<String, List<Integer>> subjects = new HashMap<>();
    static File stateDir;
    static String user, token;
    static volatile int failStatus = 0;
    static volatile long failUntil = 0, delayMs = 0;
    static long schemaGets = 0, requests = 0;

    public static void main(String[] args) throws Exception {
        stateDir = new File(args[0]);
        int port = 0;
        for (int i = 1; i < args.length; i += 2) {
            switch (args[i]) {
                case "--port": port = Integer.parseInt(args[i + 1]); break;
                case "--user": user = args[i + 1]; break;
                case "--token": token = args[i + 1]; break;
                default: throw new IllegalArgumentException("unrecognized option " + args[i]);
            }
        }
        load();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 50);
        server.createContext("/", SchemaRegistry::handle);
        server.setExecutor(Executors.newFixedThreadPool(8));
        server.start();
        Files.writeString(new File(stateDir, "port.tmp").toPath(), server.getAddress().getPort() + "\n");
        Files.move(new File(stateDir, "port.tmp").toPath(), new File(stateDir, "port").toPath(),
                   StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        System.out.println("listening on " + server.getAddress().getPort());
    }

    static synchronized void load() throws Exception {
        File f = new File(stateDir, "schemas.json");
        if (!f.exists())
            return;
        JsonNode state = json.readTree(f);
        for (JsonNode s : state.get("schemas"))
            schemas.add((ObjectNode) s);
        state.get("subjects").fields().forEachRemaining(e -> {
            List<Integer> ids = new ArrayList<>();
            for (JsonNode id : e.getValue())
                ids.add(id.asInt());
            subjects.put(e.getKey(), ids);
        });
    }

    static synchronized void save() throws Exception {
        ObjectNode state = json.createObjectNode();
        ArrayNode list = state.putArray("schemas");
        schemas.forEach(list::add);
        ObjectNode subs = state.putObject("subjects");
        subjects.forEach((k, v) -> {
            ArrayNode ids = subs.putArray(k);
            v.forEach(ids::add);
        });
        File tmp = new File(stateDir, "schemas.json.tmp");
        json.writeValue(tmp, state);
        Files.move(tmp.toPath(), new File(stateDir, "schemas.json").toPath(),
                   StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    static void send(HttpExchange ex, int status, Object body) throws java.io.IOException {
        byte[] out = json.writeValueAsBytes(body);
        ex.getResponseHeaders().set("Content-Type", "application/vnd.schemaregistry.v1+json");
        ex.sendResponseHeaders(status, out.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(out);
        }
    }

    static ObjectNode error(int code, String message) {
        ObjectNode e = json.createObjectNode();
        e.put("error_code", code);
        e.put("message", message);
        return e;
    }

    static Map<String, String> query(HttpExchange ex) {
        Map<String, String> q = new HashMap<>();
        String raw = ex.getRequestURI().getRawQuery();
        if (raw != null)
            for (String kv : raw.split("&")) {
                String[] p = kv.split("=", 2);
                q.put(p[0], p.length > 1 ? URLDecoder.decode(p[1], StandardCharsets.UTF_8) : "");
            }
        return q;
    }

    static boolean authorized(HttpExchange ex) {
        String auth = ex.getRequestHeaders().getFirst("Authorization");
        if (user != null)
            return auth != null && auth.equals("Basic " + Base64.getEncoder().encodeToString(user.getBytes(StandardCharsets.UTF_8)));
        if (token != null)
            return auth != null && auth.equals("Bearer " + token);
        return true;
    }

    static void handle(HttpExchange ex) throws java.io.IOException {
        try {
            // raw: a subject may hold an encoded "/" ("shared%2Faddr.proto")
            String path = ex.getRequestURI().getRawPath();
            String method = ex.getRequestMethod();
            if (path.startsWith("/control/")) {
                control(ex, path, method);
                return;
            }
            synchronized (SchemaRegistry.class) {
                requests++;
            }
            if (delayMs > 0)
                Thread.sleep(delayMs);
            if (failStatus != 0 && System.currentTimeMillis() < failUntil) {
                send(ex, failStatus, error(failStatus * 100 + 1, "the test registry fails on purpose"));
                return;
            }
            if (!authorized(ex)) {
                send(ex, 401, error(40101, "Unauthorized"));
                return;
            }
            String[] p = path.replaceAll("/+$", "").split("/");
            if (method.equals("GET") && p.length == 4 && p[1].equals("schemas") && p[2].equals("ids")) {
                int id;
                try {
                    id = Integer.parseInt(p[3]);
                } catch (NumberFormatException e) {
                    send(ex, 404, error(40403, "Schema " + p[3] + " not found"));
                    return;
                }
                synchronized (SchemaRegistry.class) {
                    schemaGets++;
                    if (id < 1 || id > schemas.size()) {
                        send(ex, 404, error(40403, "Schema " + id + " not found"));
                        return;
                    }
                    ObjectNode s = schemas.get(id - 1).deepCopy();
                    if (s.has("schemaType") && s.get("schemaType").asText().equals("AVRO"))
                        s.remove("schemaType");
                    send(ex, 200, s);
                }
                return;
            }
            if (p.length >= 2 && p[1].equals("subjects")) {
                subjects(ex, method, p);
                return;
            }
            send(ex, 404, error(404, "HTTP 404 Not Found"));
        } catch (Exception e) {
            send(ex, 500, error(50001, e.toString()));
        }
    }

    static void subjects(HttpExchange ex, String method, String[] p) throws Exception {
        synchronized (SchemaRegistry.class) {
            if (p.length == 2) {
                send(ex, 200, subjects.keySet());
                return;
            }
            String subject = URLDecoder.decode(p[2], StandardCharsets.UTF_8);
            List<Integer> versions = subjects.get(subject);
            if (method.equals("POST") && p.length == 4 && p[3].equals("versions")) {
                JsonNode body = json.readTree(ex.getRequestBody());
                ObjectNode s = json.createObjectNode();
                s.put("schema", body.get("schema").asText());
                if (body.has("schemaType"))
                    s.put("schemaType", body.get("schemaType").asText());
                if (body.has("references") && body.get("references").size() > 0)
                    s.set("references", body.get("references"));
                int id = 0;
                for (int i = 0; i < schemas.size(); i++)
                    if (schemas.get(i).equals(s))
                        id = i + 1;
                if (id == 0) {
                    schemas.add(s);
                    id = schemas.size();
                }
                if (versions == null)
                    subjects.put(subject, versions = new ArrayList<>());
                if (!versions.contains(id))
                    versions.add(id);
                save();
                ObjectNode out = json.createObjectNode();
                out.put("id", id);
                send(ex, 200, out);
                return;
            }
            if (versions == null) {
                send(ex, 404, error(40401, "Subject '" + subject + "' not found."));
                return;
            }
            if (p.length == 4) {
                List<Integer> numbers = new ArrayList<>();
                for (int v = 1; v <= versions.size(); v++)
                    numbers.add(v);
                send(ex, 200, numbers);
                return;
            }
            int v = p[4].equals("latest") ? versions.size() : Integer.parseInt(p[4]);
            if (v < 1 || v > versions.size()) {
                send(ex, 404, error(40402, "Version " + p[4] + " not found."));
                return;
            }
            int id = versions.get(v - 1);
            ObjectNode out = schemas.get(id - 1).deepCopy();
            out.put("subject", subject);
            out.put("version", v);
            out.put("id", id);
            send(ex, 200, out);
        }
    }

    static void control(HttpExchange ex, String path, String method) throws Exception {
        Map<String, String> q = query(ex);
        ObjectNode out = json.createObjectNode();
        switch (path) {
            case "/control/fail":
                failStatus = Integer.parseInt(q.getOrDefault("status", "503"));
                failUntil = System.currentTimeMillis() + (long) (Double.parseDouble(q.getOrDefault("seconds", "30")) * 1000);
                break;
            case "/control/delay":
                delayMs = Long.parseLong(q.getOrDefault("ms", "0"));
                break;
            case "/control/stats":
                break;
            default:
                send(ex, 404, error(404, "no such control"));
                return;
        }
        synchronized (SchemaRegistry.class) {
            out.put("schema_gets", schemaGets);
            out.put("requests", requests);
        }
        send(ex, 200, out);
    }
}
