import Testing

@testable import ServiceKit

@Suite("SQL statement splitter")
struct SQLStatementSplitterTests {
    @Test("splits at top-level semicolons only")
    func splitting() {
        let script = """
            -- a comment; not a split
            CREATE TABLE a (id int, note text DEFAULT 'x;y');
            /* block; comment */ INSERT INTO a VALUES (1, 'it''s; fine');
            CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1; $$;
            CREATE FUNCTION g() RETURNS int LANGUAGE plpgsql AS $body$ BEGIN RETURN 2; END $body$;
            SELECT "weird;name" FROM a WHERE id = $1
            """
        let statements = SQLStatementSplitter.split(script)
        #expect(statements.count == 5)
        #expect(statements[0].hasSuffix("DEFAULT 'x;y')"))
        #expect(statements[2].contains("$$ SELECT 1; $$"))
        #expect(statements[3].contains("RETURN 2; END"))
        #expect(statements[4].hasSuffix("$1"))
    }

    @Test("dollar tags with digits and E'' strings with backslash escapes do not split")
    func tagsAndEscapes() {
        let script = """
            CREATE FUNCTION h() RETURNS int LANGUAGE sql AS $fn1$ SELECT 1; $fn1$;
            INSERT INTO t VALUES (E'it\\'s; one');
            SELECT 2
            """
        let statements = SQLStatementSplitter.split(script)
        #expect(statements.count == 3, "\(statements)")
    }

    @Test("empty statements and trailing comments produce nothing")
    func empties() {
        #expect(SQLStatementSplitter.split(";;  \n-- only a comment\n").isEmpty)
    }
}
