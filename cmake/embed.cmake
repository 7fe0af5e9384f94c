# Turn a text file into a NUL-terminated C array so that the schema and the
# event catalogue in schemas/ stay the single source of truth and the
# binary never looks for them at run time.
#   cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE "${OUT}"
  "/* Generated from ${NAME}'s source in schemas/; do not edit. */\n"
  "const char ${NAME}[] = {${body}0x00};\n")
