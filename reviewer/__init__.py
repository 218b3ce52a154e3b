"""reviewer: renders hierarchical GitOps Helm fleets and reviews what a change does to them."""

__version__ = "0.1.0"
