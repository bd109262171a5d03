"""The report model (one result per target) and its writers: text, JSON,
SARIF, JUnit and CycloneDX."""

__all__: list[str] = []
