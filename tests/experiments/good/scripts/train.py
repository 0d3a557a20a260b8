import sys
print("train", sys.argv[1:])
