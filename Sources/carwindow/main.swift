import CarWindow
print("carwindow")
