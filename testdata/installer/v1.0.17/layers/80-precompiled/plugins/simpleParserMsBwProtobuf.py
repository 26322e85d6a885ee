# PLACEHOLDER for simpleParserMsBwProtobuf.py of the precompiled libs of installer v1.0.17 (tcpxogen reconstruction;
# not Google's script): the GPUViz output parser, which tcpxo.dockerfile moves from /plugins to /scripts.
