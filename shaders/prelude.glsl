// Shared by every program: placed after the #version line of each shader.
precision highp float;
