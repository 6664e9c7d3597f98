public enum ModelClientPlaceholder {}
