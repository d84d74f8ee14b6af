"""rcpc: a recipe compiler for MaxText / Tunix launches on TPU pods.

Recipes (``*.rcp``) compile, with MaxText's last-key-wins override semantics, into MaxText
flag strings and Kubernetes manifests (JobSets). See ``docs/`` for the language and CLI.
"""

__version__ = "0.1.0"
