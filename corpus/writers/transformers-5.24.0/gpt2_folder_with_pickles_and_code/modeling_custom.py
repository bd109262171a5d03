"""Custom modeling code, as trust_remote_code repositories carry (benign)."""

from transformers import GPT2LMHeadModel


class CustomModel(GPT2LMHeadModel):
    """A subclass that changes nothing."""
