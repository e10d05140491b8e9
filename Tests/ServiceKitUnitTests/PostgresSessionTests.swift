import PostgresNIO
import Testing

@testable import ServiceKit

@Suite("A service's Postgres session: startup parameters, or the role's settings behind a pooler")
struct PostgresSessionTests {
    @Test("the role's statements quote the role and each schema of the search path as identifiers, and the timeouts as strings")
    func roleSQL() {
        let session = PostgresSession.owning("ingest")
        let role = #""svc ""x""""#
        let expected = [
            #"SET search_path = "ingest";"#, "SET statement_timeout = '5000';", "SET lock_timeout = '5000';",
            "SET idle_in_transaction_session_timeout = '10000';",
        ]
        #expect(session.roleSQL(role: #"svc "x""#) == expected.map { "ALTER ROLE \(role) " + $0 }.joined(separator: "\n"))
        #expect(PostgresSession(searchPath: nil, statementTimeout: .seconds(10)).roleSettings.map(\.name) == ["statement_timeout"])
    }

    @Test("a search path as Postgres shows it reads back as its schemas")
    func searchPath() {
        #expect(PostgresSession.searchPath(#""$user", public"#) == ["$user", "public"])
        #expect(PostgresSession.searchPath("ingest") == ["ingest"])
        #expect(PostgresSession.searchPath(#""a""b", c"#) == [#"a"b"#, "c"])
    }

    @Test("with role settings only the application name is sent when connecting")
    func startupParameters() throws {
        var session = PostgresSession.owning("control")
        session.applicationName = "control-api/control"
        #expect(
            session.startupParameters.map(\.0) == [
                "search_path", "statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout", "application_name",
            ]
        )
        var configuration = try PostgresClient.Configuration(url: "postgres://svc@127.0.0.1:5432/swarmdeck")
        session.apply(to: &configuration, roleSettings: true)
        #expect(configuration.options.additionalStartupParameters.map(\.0) == ["application_name"])
    }
}
