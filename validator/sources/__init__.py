"""What a command-line argument or a library call names: local files and
folders, standard input, a hub-cache snapshot, ``http(s)://`` and ``hf://``
sources, resolved into the targets the pipeline reads."""

__all__: list[str] = []
