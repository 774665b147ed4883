// Shared by every program; the loader puts "#version 300 es" before it.
precision highp float;
