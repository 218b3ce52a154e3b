"""Source kinds: how a repository's releases and objects are found (see docs/sources.md).

`protocol` holds the interface between discovery and the later stages, `registry`
the kinds by name; each kind is a plain module checked against `SourceKind`.
"""
