// Grants the ACLs of a list like service-acls.txt on a SASL_SSL broker, as its administrator.
// Run from source by deploy/local/kafka-secure.sh (java -cp <broker jars> GrantAcls.java ...):
//   GrantAcls <bootstrap> <admin user> <admin password file> <CA PEM file> <ACL list>
// Each line: principal operation resource name (LITERAL pattern, any host, ALLOW).
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

public class GrantAcls {
    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: GrantAcls BOOTSTRAP ADMIN PASSWORD_FILE CA_PEM ACL_LIST");
            System.exit(2);
        }
        String password = Files.readString(Path.of(args[2])).strip();
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("security.protocol", "SASL_SSL");
        props.put("sasl.mechanism", "SCRAM-SHA-512");
        props.put("sasl.jaas.config",
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
                + args[1] + "\" password=\"" + password + "\";");
        props.put("ssl.truststore.type", "PEM");
        props.put("ssl.truststore.location", args[3]);
        List<AclBinding> bindings = new ArrayList<>();
        for (String raw : Files.readAllLines(Path.of(args[4]))) {
            String line = raw.strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\\s+");
            if (f.length != 4) {
                throw new IllegalArgumentException("not 'principal operation resource name': " + line);
            }
            ResourcePattern resource = new ResourcePattern(
                ResourceType.valueOf(f[2].toUpperCase(Locale.ROOT)), f[3], PatternType.LITERAL);
            AccessControlEntry entry = new AccessControlEntry(
                "User:" + f[0], "*", AclOperation.valueOf(f[1].toUpperCase(Locale.ROOT)),
                AclPermissionType.ALLOW);
            bindings.add(new AclBinding(resource, entry));
        }
        try (Admin admin = Admin.create(props)) {
            admin.createAcls(bindings).all().get();
        }
        System.out.println("acls: " + bindings.size() + " granted");
    }
}
