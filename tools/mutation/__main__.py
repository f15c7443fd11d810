import sys

from tools.mutation.generate import main

main(sys.argv[1:])
