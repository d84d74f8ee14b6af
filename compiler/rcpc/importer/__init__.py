"""``rcpc import``: recipes from the launch files a team has today, proven equal to them.

Stages, data flowing one way:

* :mod:`.literals`: recipe source text for values (string, f-string, number spellings);
* :mod:`.command`: a startup command string (``bash -c ...``) split into its MaxText
  trainer, its MaxText flag words and its ``LIBTPU_INIT_ARGS``, with bashlex;
* :mod:`.fields`: each placeholder's param type, from the Kubernetes schema of the field it
  stands in (``replicas: ${N}`` an ``int``);
* :mod:`.manifest`: a manifest template (``${VAR}`` placeholders) → recipe text, as a call
  of a shared library function (:mod:`.library`; a vLLM server's documents, :mod:`.serving`)
  when one renders the same data, else as a data literal;
* :mod:`.bash` and :mod:`.shcase`: bashlex's parser, bounded, and ``case ... esac``, which
  it lacks;
* :mod:`.shell`: a shell launch recipe → recipe text with a ``command_file`` render;
* :mod:`.proof`: the new recipe built and compared with its input;
* :mod:`.relocate`: the diagnostics of that build moved from the temporary recipe to the
  input file.
"""
