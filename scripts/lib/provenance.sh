# shellcheck shell=bash
# What a folder of generated code was made from, and the check that it still is: each Generated
# folder's README.md records SHA-256 hashes of its sources and of its files
# (scripts/generate-openapi, scripts/generate-proto). Checking needs neither a generator nor a
# build.

# sha256: the SHA-256 of standard input, in hex.
sha256() { sha256sum | cut -d' ' -f1; }

# files_sha256: the SHA-256 of the files named on standard input, in name order, each named
# (as given) and then its contents: an edit, a rename, an addition or a removal changes it.
files_sha256() {
  local file
  LC_ALL=C sort | while read -r file; do
    echo "$file"
    cat "$file"
  done | sha256
}

# generated_files_sha256 FOLDER: files_sha256 of FOLDER's Swift files (its README aside).
generated_files_sha256() { find "$1" -maxdepth 1 -type f -name '*.swift' | files_sha256; }

# check_provenance README REMEDY COMMAND...: whether README still says what COMMAND prints now;
# when not, says so, how it differs and that REMEDY remakes it, and fails.
check_provenance() {
  local readme=$1 remedy=$2
  shift 2
  cmp -s "$readme" <("$@") && return 0
  echo "${readme%/README.md} is not what its sources generate (a source changed without regenerating, or generated code was edited): run $remedy" >&2
  diff "$readme" <("$@") >&2 || true
  return 1
}
