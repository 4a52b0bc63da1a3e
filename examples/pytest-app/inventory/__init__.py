"""Stock movements published to Kafka and folded into stock levels."""

from inventory.movements import publish_movements, stock_levels

__all__ = ["publish_movements", "stock_levels"]
