public enum ModelServerPlaceholder {}
