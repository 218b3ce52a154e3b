"""Compare two snapshots: which releases and objects change, and how.

Releases pair by identity; objects by (API group, kind, namespace, name), so an
apiVersion bump within one API group is a change. Two more pairings follow:

- move: within one cluster, an object that leaves one release and appears with
  the same identity in another (both owners are kept);
- rename: within one release, a removed and an added object of the same group,
  kind and namespace whose YAML, ignoring the name, is near-identical (a
  hash-suffixed ConfigMap); best pairs are taken first.

Each changed object gets a unified diff of its normalized YAML and a path-level
view (built in, or dyff's). Changes covered by noise rules are routine: left out
of both views but listed with the rule that covered them.

Modules: `options` (how to diff, which path-level differ), `result` (the diff
model reports read), `pairing` (releases, moves, renames), `views` (one object's
unified and path-level diff), `compare` (`diff_snapshots`, putting it together).
"""
