public enum ModelTestingPlaceholder {}
