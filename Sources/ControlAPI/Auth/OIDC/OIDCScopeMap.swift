import Contracts
import Foundation

/// Which of our scopes a person signed in through OpenID Connect holds, from their ID token's
/// claims: `control.oidc.default-scopes` for everyone, and for each value of the groups claim
/// (`control.oidc.groups-claim`: a string or an array of strings) the scopes
/// `control.oidc.scope-map` gives it (`ops=stream:read agents:control;admins=admin`).
struct OIDCScopeMap: Sendable, Equatable {
    /// The claim that holds a person's groups.
    var claim: String
    var defaults: Set<Scope>
    /// A group's value → the scopes it grants.
    var groups: [String: Set<Scope>]

    /// At most this many groups in the map, and this many values of a person's claim read.
    static let maxGroups = 1000

    /// Parses the configuration's strings; nil names what is wrong.
    static func parse(claim: String, defaults: String, map: String) -> Result<OIDCScopeMap, ScopeMapError> {
        guard !claim.isEmpty, claim.utf8.count <= 256 else { return .failure(ScopeMapError("the groups claim must be a claim name")) }
        let defaultScopes: Set<Scope>
        switch Self.scopes(defaults) {
        case .success(let scopes): defaultScopes = scopes
        case .failure(let error): return .failure(error)
        }
        var groups: [String: Set<Scope>] = [:]
        for entry in map.split(separator: ";") {
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty { continue }
            guard let equals = trimmed.lastIndex(of: "=") else {
                return .failure(ScopeMapError("'\(trimmed)' is not group=scope scope…"))
            }
            let group = trimmed[..<equals].trimmingCharacters(in: .whitespaces)
            guard !group.isEmpty else { return .failure(ScopeMapError("'\(trimmed)' names no group")) }
            switch Self.scopes(String(trimmed[trimmed.index(after: equals)...])) {
            case .success(let scopes) where !scopes.isEmpty: groups[group, default: []].formUnion(scopes)
            case .success: return .failure(ScopeMapError("group '\(group)' is given no scope"))
            case .failure(let error): return .failure(error)
            }
        }
        guard groups.count <= Self.maxGroups else { return .failure(ScopeMapError("at most \(Self.maxGroups) groups")) }
        return .success(OIDCScopeMap(claim: claim, defaults: defaultScopes, groups: groups))
    }

    /// The scopes `claims` grant (empty: the person may not sign in).
    func scopes(for claims: [String: IDTokenClaims.Value]) -> Set<Scope> {
        var granted = self.defaults
        let values: [String]
        switch claims[self.claim] {
        case .string(let value): values = [value]
        case .strings(let list): values = Array(list.prefix(Self.maxGroups))
        case .other, nil: values = []
        }
        for value in values { granted.formUnion(self.groups[value] ?? []) }
        return granted
    }

    private static func scopes(_ text: String) -> Result<Set<Scope>, ScopeMapError> {
        var scopes: Set<Scope> = []
        for name in text.split(whereSeparator: { $0 == " " || $0 == "," }) {
            guard let scope = Scope(rawValue: String(name)) else {
                return .failure(ScopeMapError("'\(name)' is not a scope (\(Scope.allCases.map(\.rawValue).joined(separator: ", ")))"))
            }
            scopes.insert(scope)
        }
        return .success(scopes)
    }
}

/// What is wrong with a scope map's configuration.
struct ScopeMapError: Error, Equatable {
    var reason: String
    init(_ reason: String) { self.reason = reason }
}
