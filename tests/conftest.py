"""Suite-wide test settings.

torch runs the small models of the tests on one thread: on a 2-core machine the token-by-token
decode path is many times slower with two threads competing (and so is everything else running
beside it), and one thread also keeps float results independent of the thread count.
"""

import torch

torch.set_num_threads(1)
