public import Testing

/// How scripts/test schedules a live test, declared on the test itself: untagged tests run in
/// the groups of test targets, several groups' suites at once.
extension Tag {
    /// Run after the groups, together, with the web console's browser tests beside them: tests
    /// that load the cores on their own (the schemathesis fuzzes, the crash tests, which start
    /// real executables) and tests that move megabytes or send thousands of requests without
    /// timing anything (they would slow the timing-sensitive suites of a group).
    @Tag public static var heavy: Self
    /// Run last, one at a time: tests that hold a table lock, count spans of a few seconds, or
    /// load both cores for long enough to slow anything beside them.
    @Tag public static var alone: Self
}
