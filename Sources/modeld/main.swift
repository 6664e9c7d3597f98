print("modeld")
