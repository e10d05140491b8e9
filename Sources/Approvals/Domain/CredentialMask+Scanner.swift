extension CredentialMask {
    /// The text as scalars, with the end of each kind of run starting at every position worked
    /// out once (right to left), so finding a credential anywhere costs O(1) and masking a text
    /// is linear in its length, whatever it holds.
    struct Scanner {
        let scalars: [Unicode.Scalar]
        /// Ends of runs of token characters, of name characters, of value characters (neither
        /// whitespace nor syntax, nor `@`), of base64url characters and of base64 characters.
        private let tokenEnd: [Int]
        private let nameEnd: [Int]
        private let valueEnd: [Int]
        private let base64End: [Int]
        private let pemEnd: [Int]
        /// The same for a value in a URL's authority, which ends at `@` too.
        private let userinfoEnd: [Int]
        /// The next `'` at or after each position, and the next character that is not literal
        /// inside single quotes for every shell reading them as part of a larger string (`$`,
        /// a backquote, `"`, `\`, a line break): `count` when there is none.
        private let nextQuote: [Int]
        private let nextUnquotable: [Int]

        var count: Int { self.scalars.count }

        init(_ scalars: [Unicode.Scalar]) {
            self.scalars = scalars
            func ends(_ belongs: (Unicode.Scalar) -> Bool) -> [Int] {
                var ends = [Int](repeating: 0, count: scalars.count + 1)
                ends[scalars.count] = scalars.count
                for index in stride(from: scalars.count - 1, through: 0, by: -1) {
                    ends[index] = belongs(scalars[index]) ? ends[index + 1] : index
                }
                return ends
            }
            self.tokenEnd = ends(CredentialMask.isTokenCharacter)
            self.nameEnd = ends(CredentialMask.isNameCharacter)
            self.valueEnd = ends { !CredentialMask.isSyntaxOrSpace($0) }
            // In `https://user:secret@host/…` the host stays in view.
            self.userinfoEnd = ends { !CredentialMask.isSyntaxOrSpace($0) && $0 != "@" }
            self.base64End = ends(CredentialMask.isBase64URL)
            self.pemEnd = ends(CredentialMask.isBase64)
            self.nextQuote = ends { $0 != "'" }
            self.nextUnquotable = ends { !["$", "`", "\"", "\\", "\n", "\r"].contains($0) }
        }

        private func text(_ range: Range<Int>) -> String { String(String.UnicodeScalarView(self.scalars[range])) }

        private func starts(with prefix: String, at index: Int) -> Bool {
            var position = index
            for scalar in prefix.unicodeScalars {
                guard position < self.count, self.scalars[position] == scalar else { return false }
                position += 1
            }
            return true
        }

        /// The credential that starts at `index`, if one does.
        func credential(at index: Int) -> Range<Int>? {
            // Only at the start of a word: the previous character is not a letter, digit, `_`,
            // `-` or `.`.
            guard index == 0 || !CredentialMask.isNameCharacter(self.scalars[index - 1]) else { return nil }
            let runEnd = self.tokenEnd[index]
            // Right after `://` comes a host, or `user:password@`.
            let afterScheme = self.isAfterScheme(index)
            // A key is a word of base64url characters with a known prefix: one that goes on
            // with `.` or `/` is a host or a path unless it is long (keys are 20 and more);
            // right after `://` it is one only as the user of a URL (`https://ghp_…@github.com`).
            let keyEnd = self.base64End[index]
            if keyEnd - index >= 12, CredentialMask.keyPrefixes.contains(where: { self.starts(with: $0, at: index) }) {
                let next = keyEnd < self.count ? self.scalars[keyEnd] : " "
                let isKey = afterScheme ? next == "@" || next == ":" : keyEnd == runEnd || keyEnd - index >= 20
                if isKey { return index..<keyEnd }
            }
            if !afterScheme, let jwt = self.jwt(at: index) { return jwt }
            if runEnd - index <= 6, CredentialMask.schemes.contains(self.text(index..<runEnd)) {
                var value = runEnd
                while value < self.count, self.scalars[value] == " " || self.scalars[value] == "\t" { value += 1 }
                if value > runEnd, self.tokenEnd[value] - value >= 8 { return value..<self.tokenEnd[value] }
                return nil
            }
            return self.namedValue(at: index)
        }

        /// `eyJ…` and two more base64url parts joined by dots, and no more token characters.
        private func jwt(at index: Int) -> Range<Int>? {
            guard self.starts(with: "eyJ", at: index) else { return nil }
            var position = index
            for part in 0..<3 {
                let end = self.base64End[position]
                // A header and a signature are long; `eyJa.evil.example` is a host.
                guard end - position >= (part == 1 ? 1 : 10) else { return nil }
                if part < 2 {
                    guard end < self.count, self.scalars[end] == "." else { return nil }
                    position = end + 1
                } else {
                    position = end
                }
            }
            return self.tokenEnd[position] == position ? index..<position : nil
        }

        /// The value of `NAME=value` or `NAME: value` whose name holds a secret's word, up to
        /// whitespace, a quote or syntax, unless it begins like a path or is an auth scheme.
        private func namedValue(at index: Int) -> Range<Int>? {
            let nameEnd = self.nameEnd[index]
            guard nameEnd > index, nameEnd < self.count, self.scalars[nameEnd] == "=" || self.scalars[nameEnd] == ":" else { return nil }
            guard CredentialMask.isSecretName(self.text(index..<nameEnd)) else { return nil }
            var value = nameEnd + 1
            if self.scalars[nameEnd] == ":" {
                while value < self.count, self.scalars[value] == " " || self.scalars[value] == "\t" { value += 1 }
            }
            // A quote opening the value stays; the value is inside it. Inside single quotes
            // nothing is syntax, so the value runs to the closing quote, unless what is inside
            // would be syntax again were the quote really the end of an outer one
            // (`sh -c 'TOKEN='$(…)''`): then it ends as an unquoted value does.
            var end: Int
            if value + 1 < self.count, self.scalars[value] == "'", self.nextQuote[value + 1] < self.count,
                self.nextUnquotable[value + 1] > self.nextQuote[value + 1]
            {
                end = self.nextQuote[value + 1]
                value += 1
            } else {
                if value < self.count, self.scalars[value] == "'" || self.scalars[value] == "\"" { value += 1 }
                // In a URL's authority (`https://user:secret@host`) the value ends at `@`.
                end = self.isAfterScheme(index) ? self.userinfoEnd[value] : self.valueEnd[value]
            }
            guard end > value, self.scalars[value] != "/", self.scalars[value] != ".", self.scalars[value] != "~" else { return nil }
            // `Authorization: Bearer x`: the scheme stays, and its token is found on its own.
            if end - value <= 6, CredentialMask.schemes.contains(self.text(value..<end)) { return nil }
            return value..<end
        }

        /// Whether `index` comes right after `://`.
        private func isAfterScheme(_ index: Int) -> Bool {
            index >= 3 && self.scalars[index - 3] == ":" && self.scalars[index - 2] == "/" && self.scalars[index - 1] == "/"
        }

        /// The bodies of well-formed PEM private key blocks, in order: after a `-----BEGIN …
        /// PRIVATE KEY-----`, up to the next `-----`, which must open its `-----END`.
        func pemBodies() -> [Range<Int>] {
            var bodies: [Range<Int>] = []
            var index = 0
            while let begin = self.next("-----BEGIN ", from: index) {
                let labelStart = begin + 11
                guard let labelEnd = self.next("-----", from: labelStart) else { break }
                index = labelEnd + 5
                let label = self.text(labelStart..<labelEnd)
                guard label.hasSuffix("PRIVATE KEY"), label.unicodeScalars.allSatisfy({ $0 == " " || ("A"..."Z").contains($0) }) else {
                    continue
                }
                guard let close = self.next("-----", from: index) else {
                    // No END: the key runs on past what was kept (a cut summary).
                    bodies += self.keyRuns(in: index..<self.count)
                    break
                }
                let end = "-----END \(label)-----"
                if close > index, self.starts(with: end, at: close), CredentialMask.isPEMBody(self.scalars[index..<close]) {
                    bodies.append(index..<close)
                    index = close + end.unicodeScalars.count
                } else {
                    // Not a clean block (a key pasted into a command, quotes and all): its long
                    // base64 runs, never syntax, are masked one by one.
                    bodies += self.keyRuns(in: index..<close)
                    index = close
                }
            }
            return bodies
        }

        /// The runs of base64 characters in `range` long enough to be a key's lines (32 or more).
        private func keyRuns(in range: Range<Int>) -> [Range<Int>] {
            var runs: [Range<Int>] = []
            var index = range.lowerBound
            while index < range.upperBound {
                let end = min(self.pemEnd[index], range.upperBound)
                if end - index >= 32 {
                    runs.append(index..<end)
                    index = end
                } else {
                    index = max(end, index + 1)
                }
            }
            return runs
        }

        private func next(_ needle: String, from start: Int) -> Int? {
            guard let first = needle.unicodeScalars.first else { return nil }
            var index = start
            while index < self.count {
                if self.scalars[index] == first, self.starts(with: needle, at: index) { return index }
                index += 1
            }
            return nil
        }
    }
}
