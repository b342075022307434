"""Paper unit families.  Each sub-package registers its units on import (see hw.registry)."""
