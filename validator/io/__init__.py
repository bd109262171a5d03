"""Reading and writing tensors: the zero-copy loader, the writer, sharded-checkpoint indexes and devices.

Built on the validation core only; numpy and torch are imported when used."""

__all__: list[str] = []
