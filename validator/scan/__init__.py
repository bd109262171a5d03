"""`stcheck scan`: vetting downloads and model stores at scale (deep checks, integrity, policy, report formats)."""
