import Contracts
import Testing

@testable import ServiceKit

@Suite("NATS permissions: declared in code, written as NATS configuration")
struct NATSPermissionsTests {
    @Test("JetStream's operations are the API's subjects, under a domain's prefix too")
    func operations() {
        #expect(JetStreamOperation.streamInfo(stream: "S").subject() == "$JS.API.STREAM.INFO.S")
        #expect(JetStreamOperation.streamMessageGet(stream: "S").subject() == "$JS.API.STREAM.MSG.GET.S")
        #expect(JetStreamOperation.durableConsumerCreate(stream: "S", consumer: "c").subject() == "$JS.API.CONSUMER.DURABLE.CREATE.S.c")
        #expect(JetStreamOperation.consumerNext(stream: "S", consumer: "c").subject(apiPrefix: "$JS.hub.API") == "$JS.hub.API.CONSUMER.MSG.NEXT.S.c")
        #expect(JetStreamOperation.acknowledgements(stream: "S", consumer: "c") == "$JS.ACK.S.c.>")
        #expect(JetStreamOperation.all() == "$JS.API.>")
    }

    @Test("every service reads the revocations stream and hears revocations, and its own inboxes only")
    func everyService() throws {
        let subjects = try Subjects(prefix: "t.x")
        let permissions = NATSPermissions.everyService(named: "stream-fanout", subjects: subjects)
        #expect(permissions.publish == ["$JS.API.STREAM.INFO.SD_REVOKED_T_X", "$JS.API.STREAM.MSG.GET.SD_REVOKED_T_X"])
        #expect(permissions.subscribe == ["t.x.revoked.>", "_INBOX.stream-fanout.>"])
        #expect(!permissions.allowResponses)
    }

    @Test("merging keeps each subject once, in order of first appearance, and allows responses if either does")
    func merging() {
        let first = NATSPermissions(publish: ["a", "b"], subscribe: ["x"], allowResponses: true)
        let merged = first.merging(NATSPermissions(publish: ["b", "c"], subscribe: ["x", "y"]))
        #expect(merged == NATSPermissions(publish: ["a", "b", "c"], subscribe: ["x", "y"], allowResponses: true))
    }

    @Test("the configuration is a NATS permissions map, one subject a line; an empty list denies everything")
    func configuration() {
        let permissions = NATSPermissions(publish: ["sd.ev.>", "$JS.API.>"], subscribe: [], allowResponses: true)
        #expect(
            permissions.configuration == """
                {
                  publish: { allow: [
                    "sd.ev.>",
                    "$JS.API.>",
                  ] }
                  subscribe: { deny: [">"] }
                  allow_responses: true
                }
                """
        )
    }
}

@Suite("NATS URLs in messages")
struct NATSDisplayedServersTests {
    @Test("a server URL's user and password never reach a message")
    func credentialsLeftOut() {
        let configuration = NATSConfiguration(servers: ["nats://ingest:s3cret@nats:4222", "tls://h:4222"], name: "t")
        #expect(configuration.displayedServers == "nats://nats:4222,tls://h:4222")
    }
}
