"""Flux HelmReleases (helm.toolkit.fluxcd.io/v2), planned as helm-controller would install them.

Modules, each depending only on those above it:
  - `objects`: HelmRelease, its chart sources and values objects, decoded once;
  - `names`: the Helm release name (shortened past 53 characters) and namespace;
  - `strvals`: Helm's `--set` syntax written in place, for `valuesFrom[].targetPath`;
  - `values`: `valuesFrom` and `spec.values` merged as helm-controller merges them;
  - `postrender`: the post-render chain as built-in kustomize transformers;
  - `catalog`: the Flux objects below a source's paths;
  - `charts`: a release's chart source → a `ChartRef` and version for reviewer/charts;
  - `planner`: HelmReleases → `ReleasePlan`s for the render stage.
"""
