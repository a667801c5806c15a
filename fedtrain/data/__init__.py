"""Cross-silo datasets: real loaders (School, Vehicle, GLEAM) and synthetic stand-ins."""
from fedtrain.data.base import FederatedData

__all__ = ["FederatedData"]
