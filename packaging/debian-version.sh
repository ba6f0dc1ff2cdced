# Sourced by the packaging scripts: the Debian spelling of a Maven version, as jdeb writes it into the .debs'
# names and control files (packaging/pom.xml, snapshotExpand): every '-' becomes '~', so that 0.1.0-SNAPSHOT
# (0.1.0~SNAPSHOT) sorts before the release 0.1.0.
debian_version() { printf '%s' "$1" | sed 's/-/~/g'; }
