// A Java 17 client of the gateway's HTTP API with java.net.http only (no libraries): gets a token,
// protects one JSON, XML and SQL document and uploads a CSV. Prints one line per call: the step,
// then what the gateway answered (protected data).
//
//   java examples/clients/java/Client.java      # JDK 17 or later; runs the source file directly
//
// Settings (environment): DPG_URL (http://127.0.0.1:8080), DPG_API_KEY, DPG_CLIENT_ID,
// DPG_CLIENT_SECRET (the demo credentials of config/gateway.yaml).
//
// No gRPC here: grpc-java and protobuf-java come from Maven Central, and the stubs need protoc and
// its grpc-java plugin; none of them ships with a JDK. See README.md in this directory.
// No JSON library either: the request bodies are written by hand, and the few response fields
// read are taken with the small readers at the end (a real service would use Jackson or similar).

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;

public class Client {
    static final String URL = env("DPG_URL", "http://127.0.0.1:8080");
    static final String API_KEY = env("DPG_API_KEY", "demo-api-key");
    static final String CLIENT_ID = env("DPG_CLIENT_ID", "demo-client");
    static final String CLIENT_SECRET = env("DPG_CLIENT_SECRET", "demo-secret");
    static final String CARD = "4111 1111 1111 1111";
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    public static void main(String[] args) throws Exception {
        String token = token();
        System.out.println("token ok");
        System.out.println("json " + protect(token, "JSON", "{\"name\":\"Jane Doe\",\"cardNumber\":\"" + CARD + "\"}"));
        System.out.println("xml " + protect(token, "XML", quote("<customer><name>Jane Doe</name><cardNumber>" + CARD + "</cardNumber></customer>")));
        System.out.println("sql " + protect(token, "SQL", quote("INSERT INTO customers (name, cardNumber) VALUES ('Jane Doe', '" + CARD + "')")));
        System.out.println("csv " + protectFile(token));
    }

    static String token() throws Exception {
        String form = "grant_type=client_credentials&client_id=" + enc(CLIENT_ID) + "&client_secret=" + enc(CLIENT_SECRET);
        HttpRequest request = HttpRequest.newBuilder(URI.create(URL + "/gateway/identity/v1/token"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("X-Api-Key", API_KEY)
            .POST(HttpRequest.BodyPublishers.ofString(form))
            .build();
        String body = send(request, "token");
        return jsonString(body, body.indexOf(':', body.indexOf("\"access_token\"")) + 1);
    }

    /** dataSetJson: the dataSet member as JSON text (an object for JSON, a quoted string for XML and SQL). */
    static String protect(String token, String type, String dataSetJson) throws Exception {
        String json = "{\"manifestName\":\"customer\",\"jobType\":\"Mask\",\"dataSet\":" + dataSetJson + "}";
        HttpRequest request = HttpRequest.newBuilder(URI.create(URL + "/api/protect"))
            .header("Content-Type", "application/json")
            .header("X-Resource-Token", token)
            .header("X-Data-Set-Type", type)
            .POST(HttpRequest.BodyPublishers.ofString(json))
            .build();
        String body = send(request, "protect " + type);
        // The answer is {"dataSet":…,"requestId":…}: dataSet first, a JSON object comes back as written.
        int start = body.indexOf(':') + 1;
        return body.charAt(start) == '"' ? jsonString(body, start) : body.substring(start, valueEnd(body, start));
    }

    static String protectFile(String token) throws Exception {
        String boundary = "dpg-" + UUID.randomUUID();
        String multipart = "--" + boundary + "\r\n"
            // The metadata part first, then the file.
            + "Content-Disposition: form-data; name=\"protectFileDataset\"\r\nContent-Type: application/json\r\n\r\n"
            + "{\"manifestName\":\"customer\",\"jobType\":\"Mask\"}\r\n"
            + "--" + boundary + "\r\n"
            + "Content-Disposition: form-data; name=\"file\"; filename=\"customers.csv\"\r\nContent-Type: text/csv\r\n\r\n"
            + "name,cardNumber\nJane Doe," + CARD + "\n\r\n"
            + "--" + boundary + "--\r\n";
        HttpRequest request = HttpRequest.newBuilder(URI.create(URL + "/file/protect"))
            .header("Content-Type", "multipart/form-data; boundary=" + boundary)
            .header("X-Resource-Token", token)
            .POST(HttpRequest.BodyPublishers.ofString(multipart))
            .build();
        return String.join(" | ", send(request, "file").strip().split("\r?\n"));
    }

    /** A failed call ends the program: the problem+json code and detail say why (never a value). */
    static String send(HttpRequest request, String step) throws Exception {
        HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        if (response.statusCode() != 200) {
            System.err.println(step + ": HTTP " + response.statusCode() + " " + response.body());
            System.exit(1);
        }
        return response.body();
    }

    static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    /** A Java string as a JSON string literal. */
    static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
            else out.append(c);
        }
        return out.append('"').toString();
    }

    /** The JSON string literal starting at text[start] (after optional spaces), unescaped. */
    static String jsonString(String text, int start) {
        int i = start;
        while (text.charAt(i) == ' ') i++;
        StringBuilder out = new StringBuilder();
        for (i++; text.charAt(i) != '"'; i++) {
            char c = text.charAt(i);
            if (c != '\\') { out.append(c); continue; }
            char e = text.charAt(++i);
            switch (e) {
                case 'n' -> out.append('\n');
                case 't' -> out.append('\t');
                case 'r' -> out.append('\r');
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'u' -> { out.append((char) Integer.parseInt(text.substring(i + 1, i + 5), 16)); i += 4; }
                default -> out.append(e);
            }
        }
        return out.toString();
    }

    /** Where the JSON object or array starting at text[start] ends (strings and nesting respected). */
    static int valueEnd(String text, int start) {
        int depth = 0;
        boolean inString = false;
        for (int i = start; i < text.length(); i++) {
            char c = text.charAt(i);
            if (inString) {
                if (c == '\\') i++;
                else if (c == '"') inString = false;
            } else if (c == '"') inString = true;
            else if (c == '{' || c == '[') depth++;
            else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
        }
        throw new IllegalStateException("unterminated JSON value");
    }
}
