"""Cognition: importance rating, reflection, consolidation, forgetting."""
