"""Hierarchical memory for agents and simulations: STM / IM / LTM tiers, field-hashed state
vectors, compression, promotion, maintenance and hooks around an agent's ``act()``."""

from __future__ import annotations

from .features import compress, state_vector
from .hooks import install_memory_hooks, with_memory
from .tiered import MEMORY_TYPES, TierConfig, TierDegradedWarning, TieredMemory

__all__ = ["MEMORY_TYPES", "TierConfig", "TierDegradedWarning", "TieredMemory", "compress",
           "install_memory_hooks", "state_vector", "with_memory"]
