// TxProducer: Kafka's own Java producer, transactional, for ssp's tests.
//
//   kafka_ctl run DIR TxProducer BOOTSTRAP TOPIC STEP...
//
// Each STEP is one transaction of JSON messages {"id": N, "tx": T, "fate":
// "commit"|"abort"} with ids counted from 1 across the whole run:
//   commit:N       N messages, committed
//   abort:N        N messages, aborted
//   slow:N:SECONDS N messages, committed after SECONDS (the transaction
//                  stays open meanwhile: the last stable offset waits)
// Messages are spread over the topic's partitions by key (the id).  Prints
// "committed C aborted A" at the end.
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxProducer {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: TxProducer BOOTSTRAP TOPIC STEP...");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "ssp-test-" + args[1] + "-" + ProcessHandle.current().pid());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        long id = 0, committed = 0, aborted = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            for (int t = 2; t < args.length; t++) {
                String[] step = args[t].split(":");
                String fate = step[0];
                int n = Integer.parseInt(step[1]);
                boolean commit = !fate.equals("abort");
                producer.beginTransaction();
                for (int i = 0; i < n; i++) {
                    id++;
                    String value = String.format("{\"id\": %d, \"tx\": %d, \"fate\": \"%s\"}",
                                                 id, t - 1, commit ? "commit" : "abort");
                    producer.send(new ProducerRecord<>(args[1], Long.toString(id), value));
                }
                if (fate.equals("slow")) {
                    producer.flush();
                    Thread.sleep(Long.parseLong(step[2]) * 1000);
                }
                if (commit) {
                    producer.commitTransaction();
                    committed += n;
                } else {
                    // sent first, so that the aborted records are in the log
                    producer.flush();
                    producer.abortTransaction();
                    aborted += n;
                }
            }
        }
        System.out.println("committed " + committed + " aborted " + aborted);
    }
}
