"""Every limit rcpc puts on input, in one place. Each is reported as a diagnostic with the
span that crossed it (E08xx), never as a crash or a hang (docs/language.md, *Limits*)."""

# The help of a limit's error: values this large are mistakes, not recipes.
LIMIT_HINT = ("rcpc's limits are in docs/language.md (Limits); a value this large is a mistake "
              "(a loop over the wrong list?)")
INT_LIMIT = 2 ** 63          # ints are 64-bit signed, as in Kubernetes and YAML readers (E0806)
MAX_STRING = 1_000_000       # characters of a string, and items of a list built by + or range (E0802)
MAX_NODES = 2_000_000        # weight of one value, shared parts counted each time, and of all
                             # the renders of one recipe, every variant counted (E0802)
MAX_LAYERS = 10_000          # layers of one flag set (E0802)
MAX_DEPTH = 200              # nesting depth of expressions, evaluated or not, and of values (E0801)
MAX_STEPS = 5_000_000        # comprehension iterations of one file's evaluation (E0804)
MAX_FILE_BYTES = 4 * 1024 * 1024  # size of one source file or rcp.toml (E0803); of a file as fmt writes it (E0951)
MAX_MESSAGE_BYTES = 8 * MAX_FILE_BYTES  # one message to the language server (its body): a buffer at
                             # MAX_FILE_BYTES fits, every character JSON-escaped (6 bytes for 1)
MAX_TOKENS = 100_000         # tokens of one source file, f-string fields and comments included;
                             # layout (line breaks, a trailing comma) not counted (E0809)
MAX_SCHEMA_BYTES = 16 * 1024 * 1024  # size of one schema file: MaxText base.yml, CRD (E0320, E1102)
MAX_MANIFEST_BYTES = 256 * 1024 * 1024  # an output generation's manifest (larger: not ours, rebuilt)
MAX_RENDERS = 10_000         # renders of one recipe (E0805)
MAX_SWEEP = 1_000            # points of one variants(over = {...}) product, checked before expanding (E0636)
MAX_NAME = 200               # characters of a render or variant name: it becomes a file name
MAX_ERRORS = 20              # name errors reported for one file (then E0808), as clang's -ferror-limit
MAX_LOAD_DEPTH = 64          # files in one chain of loads, the recipe not counted (E0801)
