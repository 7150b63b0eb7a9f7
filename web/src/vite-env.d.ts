// Stylesheets are imported for their effect: Vite extracts them into the build's CSS file.
declare module '*.css';
