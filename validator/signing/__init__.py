"""Model signatures: the verifier interface and its OpenSSF Model Signing
(OMS) implementation, with the digests computed in the scan's one read."""

__all__: list[str] = []
